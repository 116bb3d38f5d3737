"""attn_contracts.setting: one typed, frozen CombineSetting, compared by value, torch-free."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from attn_contracts.modes import MODE_TABLE
from attn_contracts.setting import ALL_TO_ALL_MODES
from attn_contracts.setting import HEAD_SCATTERED_MODES
from attn_contracts.setting import CombineSetting


class _TorchLikeDtype:  # what str(torch.bfloat16) prints, without importing torch
    def __str__(self) -> str:
        return "torch.bfloat16"


def test_a_torch_dtype_and_its_name_are_one_setting() -> None:
    typed = CombineSetting(world_size=2, num_heads=8, head_dim=64, out_dtype=_TorchLikeDtype())
    named = CombineSetting(world_size=2, num_heads=8, head_dim=64, out_dtype="bfloat16")
    assert typed == named and hash(typed) == hash(named) and typed.out_dtype_bytes == 2


def test_the_mode_views_are_the_mode_table() -> None:
    assert set(HEAD_SCATTERED_MODES) == {m for m, s in MODE_TABLE.items() if s.scatters_heads}
    assert set(ALL_TO_ALL_MODES) == {m for m, s in MODE_TABLE.items() if s.launch_sees_head_slice}
    for mode in MODE_TABLE:
        setting = CombineSetting(mode=mode, world_size=4, num_heads=32, head_dim=128)
        assert setting.spec is MODE_TABLE[mode]
        assert setting.heads_per_launch == (8 if mode in ALL_TO_ALL_MODES else 32)


@pytest.mark.parametrize("bad", [{"world_size": 0}, {"num_heads": 2.0}, {"mode": "a2a_fast"},
                                 {"out_dtype": "int8"}, {"sink": 1}])
def test_a_bad_field_is_refused(bad: dict[str, object]) -> None:
    with pytest.raises(ValidationError):
        CombineSetting(**{"world_size": 2, "num_heads": 8, "head_dim": 64, **bad})


def test_a_setting_is_frozen() -> None:
    setting = CombineSetting(world_size=2, num_heads=8, head_dim=64)
    with pytest.raises(ValidationError):
        setting.world_size = 4  # type: ignore[misc]
