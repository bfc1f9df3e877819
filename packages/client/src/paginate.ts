/**
 * Async iteration over a cursor-paged list: asks for a page, yields its items, and passes the page's cursor to the
 * next request until there is none (the contract's `next_cursor`, null on the last page).
 */
export async function* paginate<Page, Item>(
  fetchPage: (cursor: string | undefined) => Promise<Page>,
  items: (page: Page) => readonly Item[],
  nextCursor: (page: Page) => string | null | undefined,
): AsyncGenerator<Item, void, undefined> {
  let cursor: string | undefined;
  do {
    const page = await fetchPage(cursor);
    yield* items(page);
    cursor = nextCursor(page) ?? undefined;
  } while (cursor !== undefined);
}
