import { type CfnElement, Stack } from 'aws-cdk-lib';
import type { IConstruct } from 'constructs';

/**
 * How cdk-nag writes a resource's ARN inside a finding id, e.g. the `<MyTable1234.Arn>` in
 * `AwsSolutions-IAM5[Resource::<MyTable1234.Arn>/index/*]`, so an acknowledgement names exactly that resource.
 */
export function nagArnOf(resource: IConstruct): string {
  const element = resource.node.defaultChild as CfnElement;
  return `<${Stack.of(resource).getLogicalId(element)}.Arn>`;
}
