"""Pictures: pure drawing functions (arrays in, arrays out) and the live viewer."""
