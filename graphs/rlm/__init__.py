"""Recursive Language Models (Zhang, Kraska, Khattab, arXiv 2512.24601; alexzhang13/rlm)."""
