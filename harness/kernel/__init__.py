"""The kernel every part may import and that imports nothing of ours (docs/concepts.md, "Layers")."""
