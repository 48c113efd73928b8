"""How far the verdicts and scores hold: rubrics, judges' report cards, combined ways, samples and seed noise."""
