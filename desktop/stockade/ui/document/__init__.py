"""Document panes: the open document, its files and commands, tree, detail, diagram, summary."""
