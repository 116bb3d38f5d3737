"""A synthetic miniature of the shapes issue 27 names (our own code, no engine's): a base class
declaring the LSE base, an MLA hierarchy, a manager that keeps a combine chosen by a conditional,
a partial kept on ``self``, an LSE written into an ``lse=`` out buffer."""
