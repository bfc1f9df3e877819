import { init, parse } from '@guanmingchiu/sqlparser-ts';
await init();
const strip = (o: any): any => Array.isArray(o) ? o.map(strip) : (o && typeof o === 'object') ? Object.fromEntries(Object.entries(o).filter(([k]) => k !== 'span' && !k.endsWith('_token')).map(([k, v]) => [k, strip(v)])) : o;
const qs: [string,string][] = [
 ['mssql', "SELECT TOP (10) PERCENT id FROM items"],
 ['mssql', "SELECT @@version"],
 ['mssql', "SELECT a.id FROM dbo.items a CROSS APPLY (SELECT TOP 1 id FROM dbo.items b WHERE b.id = a.id) c"],
 ['mssql', "SELECT id FROM items FOR JSON PATH"],
 ['mssql', "SELECT id INTO #t FROM items"],
 ['mssql', "SELECT CONVERT(varchar(10), id, 120), IIF(id > 1, 'a', 'b'), CURRENT_USER FROM items ORDER BY id OFFSET 5 ROWS FETCH NEXT 5 ROWS ONLY"],
 ['oracle', "SELECT id FROM items WHERE ROWNUM <= 5 START WITH id = 1 CONNECT BY PRIOR id = parent"],
 ['oracle', "SELECT id, NVL(name, 'x'), SYSDATE, USER FROM hr.items FETCH FIRST 5 ROWS ONLY"],
 ['oracle', "SELECT * FROM items@link"],
 ['oracle', "SELECT q'[a]' FROM dual"],
 ['oracle', "SELECT \"id\" FROM \"Items\" FOR UPDATE"],
];
for (const [d, s] of qs) {
  try { console.log(d, s, '\n ', JSON.stringify(strip(parse(s, d))).slice(0, 1400)); } catch (e) { console.log(d, s, 'ERR', (e as Error).message); }
}
