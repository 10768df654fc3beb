"""Example LEAPP pipelines shipped with leapp_lab (used by ``leapp-lab demo`` and the docs)."""
