/** The newcomer's first minute: a demo org with a sample database that works with no external service. */
import type { Gateway } from '../gateway.ts';

export interface Demo {
  banner: string;
  stop(): Promise<void>;
}

export async function startDemo(_gateway: Gateway): Promise<Demo | null> {
  return null;
}
