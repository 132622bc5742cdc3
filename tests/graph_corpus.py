"""A small corpus with known links between concepts, for the concept-graph tests.

"lubricants" and "ball bearings" never share a sentence; both share one with "machine parts", so the graph
must link them in two hops through it. The documents are about separate topics, so their concepts fall into
separate communities.
"""

from __future__ import annotations

from pathlib import Path

PHYSICS = (
    "Lubricants protect machine parts from wear. "
    "Engineers choose lubricants for hot engines. "
    "Engineers test lubricants in cold pumps. "
    "Ball bearings carry loads inside machine parts. "
    "Ball bearings sit inside the wheel hubs of bicycles. "
    "The wheel hubs of bicycles spin on ball bearings. "
    "Sliding friction resists a block on a table. "
    "Rolling friction is weaker than sliding friction. "
    "Rolling friction slows heavy trucks on a table."
)
GARDEN = (
    "Tomato plants need warm soil and steady watering. "
    "Compost feeds tomato plants through the whole summer. "
    "Earthworms turn kitchen scraps into rich compost. "
    "Earthworms loosen the warm soil around young roots. "
    "Gardeners mulch tomato plants to keep the soil moist. "
    "Gardeners spread compost before planting seedlings."
)
DOCS = {"physics.md": PHYSICS, "garden.txt": GARDEN}


def write(folder: Path, docs: dict[str, str] = DOCS) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for name, text in docs.items():
        (folder / name).write_text(f"{text}\n\n{text}\n", encoding="utf-8")  # every sentence twice
    return folder
