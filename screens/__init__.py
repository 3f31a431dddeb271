"""bringup's Textual screens and widgets. They read the store and the catalogue through
:class:`wizard.engine.Build`; all work runs in App-level workers (see ``screens.app``)."""
