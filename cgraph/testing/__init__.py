"""Conversation tests: run `*.test.yaml` cases against a graph, check each turn, measure
which exits the cases took, and report it (text, JSON, JUnit, GitHub, HTML)."""
