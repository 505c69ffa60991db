"""Sapiens2 task models, the RTMDet person detector, and checkpoint loading."""
