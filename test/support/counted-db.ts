/** A store's db that counts the statements sent through it: how the quota suites see one statement per batch or block. */
import type { Db } from '../../src/store/db.ts';

/** The database, counting the statements sent through `execute` and through executePrepared (the session's prepareQuery). */
export function counted(db: Db): { db: Db; statements: () => number } {
  let statements = 0;
  const wrapped = new Proxy(db, {
    get(target, prop, receiver) {
      if (prop === 'execute') {
        return (query: Parameters<Db['execute']>[0]) => {
          statements++;
          return target.execute(query);
        };
      }
      if (prop === '_') {
        // executePrepared runs through the session's prepareQuery (store/db.ts): each execute of what it prepares is a statement.
        const inner = target._;
        const session = new Proxy(inner.session, {
          get(s, p, r) {
            if (p !== 'prepareQuery') return Reflect.get(s, p, r);
            return (...args: Parameters<typeof s.prepareQuery>) => {
              const prepared = s.prepareQuery(...args);
              const execute = prepared.execute.bind(prepared);
              prepared.execute = (...values: Parameters<typeof execute>) => {
                statements++;
                return execute(...values);
              };
              return prepared;
            };
          },
        });
        return { ...inner, session };
      }
      return Reflect.get(target, prop, receiver);
    },
  });
  return { db: wrapped, statements: () => statements };
}
