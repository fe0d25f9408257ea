"""`cgraph lsp`: a language server for graph files and their `*.test.yaml` files.

Everything it knows comes from lint and spec: the diagnostics are lint's, the names are
read from the YAML node tree that `cgraph.spec.read` builds, the key documentation is the
published schema's. `index` finds every place a state, slot, variable or tool is written;
`cursor` reads what the cursor is on; `complete`, `hover`, `edits` and `outline` answer
from them; `files` holds the editor's buffers and what each graph depends on; `server` is
the only module that speaks the protocol (pygls).
"""
