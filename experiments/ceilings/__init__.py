"""Evidence ceilings: what each strategy can possibly answer, measured without a model."""
