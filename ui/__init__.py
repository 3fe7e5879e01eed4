"""Dashboard helpers.  Only ``app.py`` imports streamlit; these modules receive
the ``st`` module as an argument so the page can be split into tabs while the
engine (``planner``) stays free of any UI import."""
