/** The demo's sample database: a small shop, created once (idempotent). */
export const SAMPLE_SCHEMA = `
CREATE TABLE IF NOT EXISTS customers (
  id integer PRIMARY KEY,
  name text NOT NULL,
  email text NOT NULL,
  country text NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now()
);
CREATE TABLE IF NOT EXISTS products (
  id integer PRIMARY KEY,
  name text NOT NULL,
  price numeric(10,2) NOT NULL,
  in_stock boolean NOT NULL DEFAULT true
);
CREATE TABLE IF NOT EXISTS orders (
  id integer PRIMARY KEY,
  customer_id integer NOT NULL REFERENCES customers(id),
  product_id integer NOT NULL REFERENCES products(id),
  quantity integer NOT NULL,
  ordered_at timestamptz NOT NULL
);
INSERT INTO customers (id, name, email, country) VALUES
  (1, 'Ada Lovelace', 'ada@example.com', 'GB'),
  (2, 'Grace Hopper', 'grace@example.com', 'US'),
  (3, 'Margaret Hamilton', 'margaret@example.com', 'US'),
  (4, 'Hedy Lamarr', 'hedy@example.com', 'AT'),
  (5, 'Katherine Johnson', 'katherine@example.com', 'US')
ON CONFLICT DO NOTHING;
INSERT INTO products (id, name, price, in_stock) VALUES
  (1, 'Analytical engine', 1999.00, true),
  (2, 'Punch cards (100)', 12.50, true),
  (3, 'Core rope memory', 450.00, false),
  (4, 'Slide rule', 35.90, true)
ON CONFLICT DO NOTHING;
INSERT INTO orders (id, customer_id, product_id, quantity, ordered_at)
SELECT g, 1 + (g % 5), 1 + (g % 4), 1 + (g % 3), timestamptz '2026-01-01' + g * interval '1 day'
FROM generate_series(1, 40) AS g
ON CONFLICT DO NOTHING;
`;
