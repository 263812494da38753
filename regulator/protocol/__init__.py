"""The protocol: msgspec structs of every record the original writes under ``.regulator/`` and
of the four policies, its vocabulary, and the error roots every layer above raises from.

The bottom layer: it imports nothing else of regulator. Import each name from its own module
(``regulator.protocol.obligations``, ``regulator.protocol.errors``...); this package exports
nothing, so importing one module never builds the others' models.
"""
