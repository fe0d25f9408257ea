"""Wiring: what a session is made of, by name — one room for every name → backend table.

`models` (model names: `semantic`, `replay:FILE`, `scripted:FILE`, any litellm name),
`stores` (a folder, a `.sqlite` file, a `postgresql://` URL, or none: in memory),
`memories` (`off`, `chroma://HOST:PORT`, or the graph's own), `embedders` (the sentence
embedders by name), and `compose` (a session's dependencies, its first state, its record).
Each table's unknown name is an error that lists the valid ones. Above the backends and the
runtime, below `Session`: the only place that names a backend.
"""
