/**
 * Connector targets for MCP-level suites: a uniquely named database on the PostgreSQL server and one on the
 * MariaDB/MySQL server, each holding the same small tables, dropped again by `drop()`.
 */
import net from 'node:net';
import mysql from 'mysql2/promise';
import postgres from 'postgres';
import { MYSQL_URL, PG_URL } from './services.ts';

type DbConfig = {
  host: string;
  port: number;
  database: string;
  user: string;
  /** The test servers offer no TLS; the API's default is require. */
  tls: 'disable';
};

export interface Targets {
  name: string;
  pgConfig: DbConfig;
  myConfig: DbConfig;
  /** Runs SQL on the target database of that server (for setup and for checking what a call did). */
  pg(sql: string): Promise<Record<string, unknown>[]>;
  my(sql: string): Promise<Record<string, unknown>[]>;
  drop(): Promise<void>;
}

/** Tables every target holds: `items` (3 rows) and `notes` (2 rows). */
const TABLES = [
  'CREATE TABLE items (id integer PRIMARY KEY, name varchar(50) NOT NULL, price integer NOT NULL)',
  "INSERT INTO items VALUES (1, 'apple', 3), (2, 'pear', 4), (3, 'plum', 5)",
  'CREATE TABLE notes (id integer PRIMARY KEY, body varchar(200) NOT NULL)',
  "INSERT INTO notes VALUES (1, 'first'), (2, 'second')",
];

/** Creates `tg_mcp_<random>` on both servers. With `only`, just that server's database is made. */
export async function createTargets(prefix = 'tg_mcp', only?: 'pg' | 'my'): Promise<Targets> {
  const name = `${prefix}_${Date.now().toString(36)}_${Math.random().toString(36).slice(2, 8)}`;
  const pgUrl = new URL(PG_URL);
  const myUrl = new URL(MYSQL_URL);
  const pgConfig = {
    host: pgUrl.hostname,
    port: Number(pgUrl.port || 5432),
    database: name,
    user: decodeURIComponent(pgUrl.username) || 'postgres',
    tls: 'disable' as const,
  };
  const myConfig = {
    host: myUrl.hostname,
    port: Number(myUrl.port || 3306),
    database: name,
    user: decodeURIComponent(myUrl.username) || 'root',
    tls: 'disable' as const,
  };

  let pgSql: postgres.Sql | null = null;
  let myConn: mysql.Connection | null = null;
  if (only !== 'my') {
    const admin = postgres(PG_URL, { max: 1, onnotice: () => {} });
    await admin.unsafe(`CREATE DATABASE ${name}`);
    await admin.end();
    const url = new URL(PG_URL);
    url.pathname = `/${name}`;
    pgSql = postgres(url.toString(), { max: 1, onnotice: () => {} });
    for (const statement of TABLES) await pgSql.unsafe(statement);
  }
  if (only !== 'pg') {
    const admin = await mysql.createConnection({ host: myConfig.host, port: myConfig.port, user: myConfig.user, password: decodeURIComponent(myUrl.password) });
    await admin.query(`CREATE DATABASE ${name}`);
    await admin.end();
    myConn = await mysql.createConnection({
      host: myConfig.host,
      port: myConfig.port,
      user: myConfig.user,
      password: decodeURIComponent(myUrl.password),
      database: name,
    });
    for (const statement of TABLES) await myConn.query(statement);
  }

  return {
    name,
    pgConfig,
    myConfig,
    pg: async (sql) => Array.from(await pgSql!.unsafe(sql)) as Record<string, unknown>[],
    my: async (sql) => (await myConn!.query(sql))[0] as Record<string, unknown>[],
    drop: async () => {
      if (pgSql) {
        await pgSql.end();
        const admin = postgres(PG_URL, { max: 1, onnotice: () => {} });
        await admin.unsafe(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
        await admin.end();
      }
      if (myConn) {
        await myConn.query(`DROP DATABASE IF EXISTS ${name}`);
        await myConn.end();
      }
    },
  };
}

/** A local port with nothing listening: bind an ephemeral one, then free it. */
export async function deadPort(): Promise<number> {
  const server = net.createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as net.AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

/**
 * A TCP relay to a database server; `close()` cuts every relayed connection and stops listening (the database "goes
 * down"). `replyDelayMs` holds back what the server sends by that long (a slow network), in order.
 */
export async function tcpProxy(targetHost: string, targetPort: number, replyDelayMs = 0): Promise<{ port: number; close: () => Promise<void> }> {
  const sockets = new Set<net.Socket>();
  const server = net.createServer((client) => {
    const upstream = net.connect(targetPort, targetHost);
    sockets.add(client);
    sockets.add(upstream);
    const end = () => {
      client.destroy();
      upstream.destroy();
      sockets.delete(client);
      sockets.delete(upstream);
    };
    client.on('error', end).on('close', end);
    upstream.on('error', end).on('close', end);
    client.pipe(upstream);
    if (replyDelayMs > 0) upstream.on('data', (chunk: Buffer) => setTimeout(() => client.writable && client.write(chunk), replyDelayMs));
    else upstream.pipe(client);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as net.AddressInfo;
  return {
    port,
    close: async () => {
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      for (const s of sockets) s.destroy();
      await closed;
    },
  };
}
