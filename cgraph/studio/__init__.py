"""The studio: a page where a designer chats with a graph and watches it move.

It is served by `cgraph serve` (`--studio`, or `cgraph studio GRAPH`) and talks to the
same API as any client (`/v1/sessions...`); what it adds is what only a designer's page
needs: the graph drawn with element ids to light, a turn's reasons, the graph file
watched and reloaded, a conversation replayed on the edited graph, and a conversation
saved as a test case. Each is a call of the library (`Session`, `lint_paths`,
`cgraph.draw`), never a second engine.
"""
