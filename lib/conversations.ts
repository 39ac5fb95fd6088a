import { ArnFormat, Duration, Stack, Validations } from 'aws-cdk-lib';
import * as logs from 'aws-cdk-lib/aws-logs';
import * as scheduler from 'aws-cdk-lib/aws-scheduler';
import * as targets from 'aws-cdk-lib/aws-scheduler-targets';
import * as sqs from 'aws-cdk-lib/aws-sqs';
import * as sfn from 'aws-cdk-lib/aws-stepfunctions';
import * as tasks from 'aws-cdk-lib/aws-stepfunctions-tasks';
import { Construct } from 'constructs';
import { MAX_POLLER_SHARDS } from '../shared/messaging/fleet';
import { GatewayFunction } from './gateway-function';
import { nagArnOf } from './nag-findings';
import { scheduleRetry } from './sync';

/**
 * Pollers running at once. The plan should return at most this many shards: a shard beyond it would wait
 * for a free slot, i.e. a whole poller run (~14 minutes), before its conversations are polled.
 */
export const maxPollerShards = MAX_POLLER_SHARDS;

/**
 * A fleet execution hands over to a fresh one after this many rounds (~14 minutes each), well below the 25,000
 * history events a standard execution may have: a round is about 13 events plus 7 per shard.
 */
export const roundsPerFleetExecution = 12;

export interface ConversationsProps {
  readonly logRetention: logs.RetentionDays;
  readonly scheduleDeadLetterQueue: sqs.IQueue;
}

/**
 * Messaging conversations. One lifecycle execution per conversation (start, active, ended, transcript) waits on a
 * task token while the conversation lives, so an idle conversation costs nothing. The long-polls themselves are
 * held by the poller fleet: each poller run holds many conversations' polls for ~14 minutes, and the fleet sizes
 * itself to the number of active conversations.
 */
export class Conversations extends Construct {
  readonly task: GatewayFunction;
  readonly fleetPlan: GatewayFunction;
  readonly poller: GatewayFunction;
  readonly lifecycle: sfn.StateMachine;
  readonly fleet: sfn.StateMachine;
  /** New conversations reach the running pollers through it (their first poll within a second). */
  readonly noticeQueue: sqs.Queue;
  /**
   * The lifecycle's ARN built from its name. conversation-task answers the lifecycle's task tokens, and the
   * lifecycle invokes conversation-task: a Ref in that grant would be a circular dependency.
   */
  readonly lifecycleArn: string;
  /** The fleet's ARN built from its name, for the same reason: the poller starts surge executions of the fleet that invokes it. */
  readonly fleetArn: string;

  constructor(scope: Construct, id: string, props: ConversationsProps) {
    super(scope, id);
    const stack = Stack.of(this);
    const fn = (fnId: string, handler: 'conversation-task' | 'poller-fleet-plan' | 'poller', purpose: string, timeout: Duration, memorySize?: number, lean?: boolean) =>
      new GatewayFunction(this, fnId, { handler, purpose, timeout, logRetention: props.logRetention, ...(memorySize ? { memorySize } : {}), ...(lean ? { lean } : {}) });

    this.task = fn('Task', 'conversation-task', 'runs each step of a conversation lifecycle', Duration.seconds(30));
    this.fleetPlan = fn('FleetPlan', 'poller-fleet-plan', 'sizes the poller fleet to the active conversations', Duration.seconds(30));
    // The poller returns after ~14 minutes, before this limit. It waits on sockets, nearly all the
    // time while any conversation lives: at 128 MB a shard costs ~$4.30 a month running nonstop
    // ($17 at 512 MB). It runs lean (no source maps, a small young generation: lib/bundling.ts) so
    // that its 128 MB hold POLLER_CAPACITY (230) polls with a fifth to spare (docs/conversations.md, "Conversation cost").
    this.poller = fn('Poller', 'poller', 'holds the long-polls of one shard of active conversations', Duration.minutes(15), 128, true);

    this.noticeQueue = new sqs.Queue(this, 'PollerNotices', {
      encryption: sqs.QueueEncryption.SQS_MANAGED,
      enforceSSL: true,
      retentionPeriod: Duration.minutes(15),
      visibilityTimeout: Duration.seconds(30),
    });
    Validations.of(this.noticeQueue).acknowledge({
      id: 'AwsSolutions-SQS3',
      reason: 'Notices are hints that speed up a first poll; a notice that is never taken is not lost work: the next sweep or fleet round claims the conversation from the table.',
    });

    const lifecycleName = `${stack.stackName}-conversation`;
    this.lifecycleArn = stack.formatArn({
      service: 'states',
      resource: 'stateMachine',
      resourceName: lifecycleName,
      arnFormat: ArnFormat.COLON_RESOURCE_NAME,
    });
    this.lifecycle = this.stateMachine('Lifecycle', lifecycleName, this.lifecycleDefinition(), props.logRetention, [this.task]);

    const fleetName = `${stack.stackName}-poller-fleet`;
    this.fleetArn = stack.formatArn({ service: 'states', resource: 'stateMachine', resourceName: fleetName, arnFormat: ArnFormat.COLON_RESOURCE_NAME });
    this.fleet = this.stateMachine('Fleet', fleetName, this.fleetDefinition(fleetName), props.logRetention, [
      this.fleetPlan,
      this.poller,
    ]);

    // A fleet that died (or was never started) restarts within 15 minutes.
    new scheduler.Schedule(this, 'FleetRestart', {
      description: 'Restarts the poller fleet if it is not running',
      schedule: scheduler.ScheduleExpression.rate(Duration.minutes(15)),
      target: new targets.StepFunctionsStartExecution(this.fleet, {
        input: scheduler.ScheduleTargetInput.fromObject({ startedBy: 'schedule' }),
        deadLetterQueue: props.scheduleDeadLetterQueue,
        ...scheduleRetry,
      }),
    });
  }

  /** Start -> Active (wait for the end) -> Ended -> Transcript; any failure marks the conversation failed. */
  private lifecycleDefinition(): sfn.IChainable {
    const step = (stepId: string, name: string) =>
      new tasks.LambdaInvoke(this, stepId, {
        lambdaFunction: this.task,
        payload: sfn.TaskInput.fromObject({ step: name, input: sfn.JsonPath.entirePayload }),
        // The function keeps the conversation's state in the table; the execution carries only its reference.
        resultPath: sfn.JsonPath.DISCARD,
      });

    const failed = new sfn.Fail(this, 'Conversation failed');
    const markFailed = step('Mark failed', 'mark-failed');
    markFailed.addCatch(failed, { resultPath: '$.markFailedError' }).next(failed);
    const onError = { resultPath: '$.error' };

    const start = step('Start', 'start');
    const active = new tasks.LambdaInvoke(this, 'Active', {
      lambdaFunction: this.task,
      integrationPattern: sfn.IntegrationPattern.WAIT_FOR_TASK_TOKEN,
      payload: sfn.TaskInput.fromObject({ step: 'await-end', taskToken: sfn.JsonPath.taskToken, input: sfn.JsonPath.entirePayload }),
      // The poller or conversation-task sends the token back when the conversation ends; until then this waits for free.
      taskTimeout: sfn.Timeout.duration(Duration.hours(24)),
      resultPath: '$.end',
    });
    const ended = new sfn.Pass(this, 'Ended');
    const transcript = step('Transcript', 'transcript');
    // Platform faults while writing the transcript: try again before calling the conversation failed.
    transcript.addRetry({ errors: ['States.TaskFailed'], interval: Duration.seconds(5), maxAttempts: 4, backoffRate: 2 });

    start.addCatch(markFailed, onError);
    // A conversation silent for a day is over: keep its transcript rather than call it a failure.
    active.addCatch(ended, { errors: [sfn.Errors.TIMEOUT], resultPath: '$.end' });
    active.addCatch(markFailed, onError);
    transcript.addCatch(markFailed, onError);

    return start.next(active).next(ended).next(transcript).next(new sfn.Succeed(this, 'Conversation closed'));
  }

  /**
   * Begin -> Plan -> (no active conversations: stop) | (round limit: hand over) | Map over shards, one poller
   * each -> next round -> Plan. The plan function receives the execution id, so it can let only one fleet run
   * (a lease), and `handOverFrom` tells it which execution is handing the lease over.
   */
  private fleetDefinition(fleetName: string): sfn.IChainable {
    const begin = new sfn.Pass(this, 'Begin', {
      parameters: { round: 1, startedWith: sfn.JsonPath.entirePayload },
    });
    const plan = new tasks.LambdaInvoke(this, 'Plan', {
      lambdaFunction: this.fleetPlan,
      payload: sfn.TaskInput.fromObject({
        executionId: sfn.JsonPath.executionId,
        round: sfn.JsonPath.numberAt('$.round'),
        startedWith: sfn.JsonPath.objectAt('$.startedWith'),
      }),
      // Expected answer: {"run": true|false, "shards": [{"shard": 0, "shards": n, "endsAt": ms}, ...], "active": <live conversations>}.
      resultSelector: { 'run.$': '$.Payload.run', 'shards.$': '$.Payload.shards', 'active.$': '$.Payload.active' },
      resultPath: '$.plan',
    });
    plan.addRetry({ maxAttempts: 3, interval: Duration.seconds(5), backoffRate: 2 });

    const pollShard = new tasks.LambdaInvoke(this, 'Poll shard', {
      lambdaFunction: this.poller,
      payload: sfn.TaskInput.fromJsonPathAt('$'),
      resultPath: sfn.JsonPath.DISCARD,
    });
    // A poller run that crashed is started again at once for the rest of the round; its leases lapse and are claimed.
    pollShard.addRetry({ errors: ['States.ALL'], interval: Duration.seconds(2), maxAttempts: 3, backoffRate: 1 });
    // One failed poller run must not stop the fleet: the next round polls its shard again.
    pollShard.addCatch(new sfn.Pass(this, 'Shard failed'), { resultPath: '$.error' });
    const pollShards = new sfn.Map(this, 'Poll shards', {
      itemsPath: '$.plan.shards',
      maxConcurrency: maxPollerShards,
      resultPath: sfn.JsonPath.DISCARD,
    }).itemProcessor(pollShard);

    const nextRound = new sfn.Pass(this, 'Next round', {
      parameters: {
        round: sfn.JsonPath.mathAdd(sfn.JsonPath.numberAt('$.round'), 1),
        startedWith: sfn.JsonPath.objectAt('$.startedWith'),
      },
    });
    const handOver = new tasks.StepFunctionsStartExecution(this, 'Hand over', {
      stateMachine: sfn.StateMachine.fromStateMachineName(this, 'FleetItself', fleetName),
      input: sfn.TaskInput.fromObject({ handOverFrom: sfn.JsonPath.executionId }),
      resultPath: sfn.JsonPath.DISCARD,
    });

    const decide = new sfn.Choice(this, 'Any active conversations?')
      .when(sfn.Condition.booleanEquals('$.plan.run', false), new sfn.Succeed(this, 'Fleet idle'))
      .when(sfn.Condition.numberGreaterThan('$.round', roundsPerFleetExecution), handOver.next(new sfn.Succeed(this, 'Handed over')))
      .otherwise(pollShards.next(nextRound).next(plan));

    // A surge execution runs one extra poller for the rest of the round, when new conversations found every poller full.
    const surgePoller = new tasks.LambdaInvoke(this, 'Surge poller', {
      lambdaFunction: this.poller,
      payload: sfn.TaskInput.fromJsonPathAt('$.surge'),
      resultPath: sfn.JsonPath.DISCARD,
    });
    surgePoller.addCatch(new sfn.Pass(this, 'Surge failed'), { resultPath: '$.error' });
    const surge = new sfn.Choice(this, 'Surge?')
      .when(sfn.Condition.isPresent('$.surge'), surgePoller.next(new sfn.Succeed(this, 'Surge done')))
      .otherwise(begin.next(plan).next(decide));
    return surge;
  }

  private stateMachine(
    smId: string,
    name: string,
    definition: sfn.IChainable,
    retention: logs.RetentionDays,
    invokes: GatewayFunction[],
  ): sfn.StateMachine {
    const logGroup = new logs.LogGroup(this, `${smId}Logs`, {
      logGroupName: `/aws/vendedlogs/states/${name}`,
      retention,
    });
    const machine = new sfn.StateMachine(this, smId, {
      stateMachineName: name,
      stateMachineType: sfn.StateMachineType.STANDARD,
      definitionBody: sfn.DefinitionBody.fromChainable(definition),
      tracingEnabled: true,
      // Messages may hold personal data: log every event, never its input or output.
      logs: { destination: logGroup, level: sfn.LogLevel.ALL, includeExecutionData: false },
    });
    acknowledgeStateMachineWildcards(machine, invokes);
    return machine;
  }
}

function acknowledgeStateMachineWildcards(machine: sfn.StateMachine, invokes: GatewayFunction[]): void {
  const role = Validations.of(machine.role);
  role.acknowledge({
    id: 'AwsSolutions-IAM5[Resource::*]',
    reason:
      'X-Ray tracing and CloudWatch Logs delivery (logs:CreateLogDelivery, ...) support no resource-level permissions; CDK grants them on *.',
  });
  for (const fn of invokes) {
    role.acknowledge({
      id: `AwsSolutions-IAM5[Resource::${nagArnOf(fn)}:*]`,
      reason: 'LambdaInvoke may call any version or alias of this one function (ARN:*), as CDK grants it.',
    });
  }
}
