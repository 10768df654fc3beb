"""ONNX files, read and edited: below every leaf package.

``manifest`` (the tap manifest in ``metadata_props``, tap outputs added and stripped), ``graph_edit``
(small explicit edits: tap markers out, values renamed, types read), ``wire`` (the top-level graph read
from the protobuf wire format without ``import onnx``) and ``split`` (a file as its parsed graph and
its weights' bytes). ``taps`` writes these files, ``engines`` convert them, ``compare`` draws their
graphs: each reads them through here, so none of those leaves imports another. It imports only
``leapp_lab.model`` (and onnx, inside the modules that parse or edit a graph).
"""
