"""The commands of ``pykai``, one module per family; ``cli/app.py`` assembles them. Each
module imports at its top only what its signature needs, and the rest when it runs."""
