-- A small warehouse for the example computations; portable across SQLite, DuckDB and
-- PostgreSQL. One statement per line-terminating semicolon.
CREATE TABLE customers (customer_id VARCHAR(10) PRIMARY KEY, name VARCHAR(40) NOT NULL, region VARCHAR(10) NOT NULL, active BOOLEAN NOT NULL);
CREATE TABLE sales (sale_id INTEGER PRIMARY KEY, customer_id VARCHAR(10) NOT NULL, region VARCHAR(10) NOT NULL, fiscal_year INTEGER NOT NULL, sold_on DATE NOT NULL, amount DECIMAL(10,2) NOT NULL);
INSERT INTO customers VALUES ('C1', 'Acme', 'EU', TRUE), ('C2', 'Globex', 'US', TRUE), ('C3', 'Initech', 'US', FALSE), ('C4', 'Umbrella', 'APAC', TRUE);
INSERT INTO sales VALUES (1, 'C1', 'EU', 2023, '2023-11-02', 1200.50), (2, 'C2', 'US', 2023, '2023-12-15', 800.00), (3, 'C1', 'EU', 2024, '2024-01-15', 300.25), (4, 'C2', 'US', 2024, '2024-02-01', 980.00), (5, 'C3', 'US', 2024, '2024-03-30', 120.00), (6, 'C4', 'APAC', 2024, '2024-05-05', 4500.75), (7, 'C4', 'APAC', 2024, '2024-06-30', 99.25);
