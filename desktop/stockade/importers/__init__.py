"""Importers from TM7, Threat Dragon, OTM and pytm into `.thf`; exporters to OTM and Threat Dragon."""
