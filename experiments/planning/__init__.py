"""An experiment's plan and costs: prices, spend, break-even points, amortized costs."""
