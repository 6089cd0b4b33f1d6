-- The demo's data on a local Trino, in the memory catalog (gone when the server restarts).
-- Run it once the server is up; rerunning it is harmless (IF NOT EXISTS).
CREATE SCHEMA IF NOT EXISTS memory.crm;
CREATE TABLE IF NOT EXISTS memory.crm.clients AS
SELECT client_name, status, region, CAST(revenue AS decimal(10, 2)) AS revenue, CAST(signed AS date) AS signed
FROM (
    VALUES
        ('Acme', 'active', 'EU', '1200.50', '2024-01-15'),
        ('Globex', 'active', 'US', '980.00', '2024-02-01'),
        ('Initech', 'churned', 'US', '120.00', '2023-11-30'),
        ('Umbrella', 'active', 'APAC', '4500.75', '2024-03-09'),
        ('Hooli', 'prospect', 'US', '0.00', '2024-04-20'),
        ('Stark', 'active', 'US', '9999.99', '2022-06-06'),
        ('Wayne', 'churned', 'EU', '310.10', '2021-09-09'),
        ('Tyrell', 'active', 'APAC', '777.00', '2024-05-05')
) AS t (client_name, status, region, revenue, signed);
CREATE SCHEMA IF NOT EXISTS memory.sheets;
CREATE TABLE IF NOT EXISTS memory.sheets.inventory AS
SELECT product, CAST(stock AS integer) AS stock
FROM (VALUES ('widget', 12), ('gadget', 0)) AS t (product, stock);
