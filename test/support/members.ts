/** Members for suites (issue 40): invited by an admin credential and made active by following the link. */
import type { Gateway } from '../../src/gateway.ts';
import { api } from './gateway.ts';

/** Invites `email` with `roles` using `manageToken` and sets `password` through the link; returns the member id. */
export async function addMember(gateway: Gateway, manageToken: string, email: string, password: string, roles: string[] = ['contributor']): Promise<string> {
  const invited = await api(gateway, 'POST', '/api/org/members', manageToken, { email, roles });
  if (invited.status !== 201) throw new Error(`invite failed: ${invited.status} ${await invited.text()}`);
  const { member, invitation } = (await invited.json()) as { member: { id: string }; invitation: { url: string } };
  const token = invitation.url.slice(invitation.url.indexOf('#/join/') + '#/join/'.length);
  const accepted = await api(gateway, 'POST', '/members/accept', null, { token, password });
  if (accepted.status !== 200) throw new Error(`accept failed: ${accepted.status} ${await accepted.text()}`);
  return member.id;
}
