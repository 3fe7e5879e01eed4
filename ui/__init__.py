"""The dashboard: the only package (with the root ``app.py`` shim) that imports streamlit
or plotly.  ``ui.app`` imports streamlit; every other module receives the ``st`` module
as an argument (``PageContext.st``), so the page is split into tabs while the engine
(``planner``) stays free of any UI import.  ``ui.tabs.registry`` lists every tab."""
