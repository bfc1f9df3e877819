/** When a trial has ended: the one rule both tools/call and the subscription view follow. */

/**
 * A trial ends at trial_expires_at (inclusive): from that instant tools/call is refused with -32000 until the org
 * subscribes; tools/list, initialize and the REST API keep working so an admin can see and fix the account.
 */
export function trialExpired(org: { subscriptionStatus: string; trialExpiresAt: Date | null }, now: Date): boolean {
  return org.subscriptionStatus === 'trialing' && org.trialExpiresAt !== null && now.getTime() >= org.trialExpiresAt.getTime();
}
