"""How fast: generation and judge engines, their settings and ceilings, the pipeline's own overhead."""
