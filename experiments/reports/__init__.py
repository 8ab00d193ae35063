"""Reports of a run folder: scores, statistics, comparisons, plots, the HTML page, exports."""
