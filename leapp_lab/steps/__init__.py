"""Steps: the orchestration above the leaf packages (placeholder until the steps package lands)."""
