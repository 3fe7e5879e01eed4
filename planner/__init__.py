"""kvplan's pure analytical engine: LLM inference capacity planning from first principles."""
