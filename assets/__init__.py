"""Data shipped with bringup: the stylesheet, reference tables, the JSON schema, target scripts."""
