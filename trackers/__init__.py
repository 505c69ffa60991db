"""Time: identity association across frames and temporal keypoint filters (numpy in, numpy out)."""
