"""The extractive composer: answers made only of the evidence's own words, quoted whole."""
