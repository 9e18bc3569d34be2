"""Method plugins: scikit-learn style estimators trained on candidate labels."""
