"""Pictures of graphs and of what conversations did in them: one home for drawing."""
