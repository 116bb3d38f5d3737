from typing import Any

class BatchDecodeWithPagedKVCacheWrapper:
    def run(
        self,
        q: Any,
        paged_kv_cache: Any,
        *args: Any,
        q_scale: float | None = None,
        k_scale: float | None = None,
        v_scale: float | None = None,
        out: Any = None,
        lse: Any = None,
        return_lse: bool = False,
        enable_pdl: bool | None = None,
        window_left: int | None = None,
        sinks: Any = None,
        q_len_per_req: int | None = None,
        skip_softmax_threshold_scale_factor: float | None = None,
        kv_cache_sf: Any = None,
    ) -> Any: ...

def trtllm_batch_decode_with_kv_cache_mla(query: Any, kv_cache: Any, workspace_buffer: Any,
                                          *args: Any, **kwargs: Any) -> Any: ...

def __getattr__(name: str) -> Any: ...
