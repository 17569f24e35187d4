"""All nn layers; each file adds its own import lines here."""
