import { CfnElement, Stack } from 'aws-cdk-lib';

/** Each CloudFormation resource's construct path below the stack (`Storage/Table/Resource`), by logical id. */
export function constructPaths(stack: Stack): Record<string, string> {
  const paths: Record<string, string> = {};
  for (const node of stack.node.findAll()) {
    if (!CfnElement.isCfnElement(node)) continue;
    paths[stack.getLogicalId(node)] = node.node.path.split('/').slice(1).join('/');
  }
  return paths;
}
