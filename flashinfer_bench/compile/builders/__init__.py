"""One builder per way of turning a solution's sources into a callable; see ``registry.py``."""
