"""The kernel every part may import and that imports nothing of ours (design.md, "Layers")."""
