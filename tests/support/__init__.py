"""What tests (and the bench scripts) share: the repository's data, named once."""
