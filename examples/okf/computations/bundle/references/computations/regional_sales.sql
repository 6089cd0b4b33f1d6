SELECT region, COUNT(*) AS orders, SUM(amount) AS amount
FROM sales
WHERE region = :region AND sold_on >= :since
GROUP BY region
