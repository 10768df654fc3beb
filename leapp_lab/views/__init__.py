"""Renderers of reports, registered per (report kind, target): ``render(report, target, **opts)``.

``leapp_lab.views.registry`` holds the registry and the built-in registrations; docs/contributing.md
("Adding a report kind") shows how a new kind gets its views. Importing this package imports no
renderer: each is imported on its first use.
"""
from .registry import ANY_KIND, TARGETS, NoRenderer, kinds, lookup, register, render

__all__ = ["ANY_KIND", "TARGETS", "NoRenderer", "kinds", "lookup", "register", "render"]
