"""Metering and budgets: limits and their guard, usage, prices, cost models, plan checks."""
