"""Whether to answer: the support score (one function for answers and calibration), the abstain bar and its label-free calibration, and the topic index of section headings."""
