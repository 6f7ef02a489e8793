"""Reports: summary tables and plots."""
