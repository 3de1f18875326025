"""primitives"""
