/**
 * DescribeAcls, CreateAcls and DeleteAcls (what `kafka-acls.sh --bootstrap-server` and the admin
 * clients call), over the ACLs in the coordination store. As in Kafka: without an authorizer
 * (`authorizer=none`) each answers SECURITY_DISABLED; describing needs DESCRIBE on the cluster,
 * creating and deleting ALTER on the cluster (else CLUSTER_AUTHORIZATION_FAILED, nothing changed);
 * a creation or filter with an unknown or ANY code where a concrete one is needed is refused with
 * INVALID_REQUEST on its own.
 *
 * Describe answers from the authorizer's cache (kept current by watches); create and delete
 * write the store and then wait for the cache to have read it back, so a list that follows an
 * add on the same broker sees it.
 */
import { CreateAclsApi, type AclCreationResult, type CreateAclsRequest, type CreateAclsResponse } from '../../protocol/apis/create-acls.js';
import { DeleteAclsApi, type DeleteAclsFilter, type DeleteAclsRequest, type DeleteAclsResponse } from '../../protocol/apis/delete-acls.js';
import { DescribeAclsApi, type DescribeAclsRequest, type DescribeAclsResource, type DescribeAclsResponse } from '../../protocol/apis/describe-acls.js';
import { KafkaErrorCode } from '../../protocol/kafka-errors.js';
import type { CoordinationStore } from '../../coordination/store.js';
import type { BrokerContext } from '../context.js';
import type { ApiHandler, RequestContext } from '../router.js';
import { AclOperation, CLUSTER_RESOURCE_NAME, filterMatches, invalidBindingReason, invalidFilterReason, ResourceType, type AclBinding, type AclBindingFilter } from '../security/acl.js';
import { addAcls, removeAcls } from '../security/acl-admin.js';

const SECURITY_DISABLED_MESSAGE = 'no authorizer is configured on this broker (authorizer=none); set authorizer=acl to use ACLs';

/** Undefined when the request may go on; else the error code and message every answer carries. */
function refusal(context: BrokerContext, requestContext: RequestContext, operation: AclOperation): { errorCode: number; errorMessage: string } | undefined {
  if (!context.authorizer.enabled) return { errorCode: KafkaErrorCode.SECURITY_DISABLED, errorMessage: SECURITY_DISABLED_MESSAGE };
  if (context.authorizer.authorize(requestContext.identity, operation, ResourceType.CLUSTER, CLUSTER_RESOURCE_NAME)) return undefined;
  const verb = operation === AclOperation.DESCRIBE ? 'DESCRIBE' : 'ALTER';
  return { errorCode: KafkaErrorCode.CLUSTER_AUTHORIZATION_FAILED, errorMessage: `${requestContext.identity.principal} may not ${verb} the cluster, which managing ACLs needs` };
}

function toFilter(request: DescribeAclsRequest | DeleteAclsFilter): AclBindingFilter {
  return {
    resourceType: request.resourceTypeFilter,
    resourceName: request.resourceNameFilter,
    patternType: request.patternTypeFilter,
    principal: request.principalFilter,
    host: request.hostFilter,
    operation: request.operation,
    permission: request.permissionType,
  };
}

export function describeAclsHandler(context: BrokerContext): ApiHandler<DescribeAclsRequest, DescribeAclsResponse> {
  return {
    api: DescribeAclsApi,
    async handle(request, _version, requestContext) {
      const refused = refusal(context, requestContext, AclOperation.DESCRIBE);
      if (refused !== undefined) return { throttleTimeMs: 0, ...refused, resources: [] };
      const filter = toFilter(request);
      const invalid = invalidFilterReason(filter);
      if (invalid !== undefined) return { throttleTimeMs: 0, errorCode: KafkaErrorCode.INVALID_REQUEST, errorMessage: invalid, resources: [] };
      const resources = new Map<string, { resourceType: number; resourceName: string; patternType: number; acls: DescribeAclsResource['acls'][number][] }>();
      for (const binding of context.authorizer.bindings()) {
        if (!filterMatches(filter, binding)) continue;
        const key = JSON.stringify([binding.resourceType, binding.resourceName, binding.patternType]);
        const resource = resources.get(key) ?? { resourceType: binding.resourceType, resourceName: binding.resourceName, patternType: binding.patternType, acls: [] };
        resource.acls.push({ principal: binding.principal, host: binding.host, operation: binding.operation, permissionType: binding.permission });
        resources.set(key, resource);
      }
      return { throttleTimeMs: 0, errorCode: KafkaErrorCode.NONE, errorMessage: null, resources: [...resources.values()] };
    },
  };
}

export function createAclsHandler(context: BrokerContext, store: CoordinationStore): ApiHandler<CreateAclsRequest, CreateAclsResponse> {
  return {
    api: CreateAclsApi,
    async handle(request, _version, requestContext) {
      const refused = refusal(context, requestContext, AclOperation.ALTER);
      if (refused !== undefined) return { throttleTimeMs: 0, results: request.creations.map(() => refused) };
      const bindings = request.creations.map(
        (creation): AclBinding => ({
          resourceType: creation.resourceType as AclBinding['resourceType'],
          resourceName: creation.resourceName,
          patternType: creation.resourcePatternType as AclBinding['patternType'],
          principal: creation.principal,
          host: creation.host,
          operation: creation.operation as AclBinding['operation'],
          permission: creation.permissionType as AclBinding['permission'],
        }),
      );
      const results: AclCreationResult[] = bindings.map((binding) => {
        const invalid = invalidBindingReason(binding);
        return invalid === undefined ? { errorCode: KafkaErrorCode.NONE, errorMessage: null } : { errorCode: KafkaErrorCode.INVALID_REQUEST, errorMessage: invalid };
      });
      const valid = bindings.filter((_, index) => results[index]?.errorCode === KafkaErrorCode.NONE);
      const outcomes = await addAcls(store, valid);
      let next = 0;
      const answered = results.map((result) => {
        if (result.errorCode !== KafkaErrorCode.NONE) return result;
        const failure = outcomes[next++];
        if (failure === undefined) return result;
        context.logger.error({ err: failure }, 'storing an ACL failed');
        return { errorCode: KafkaErrorCode.UNKNOWN_SERVER_ERROR, errorMessage: `the ACL may not have been stored (${failure.message}); list the ACLs, then retry` };
      });
      if (valid.length > 0) {
        context.logger.info({ principal: requestContext.identity.principal, created: valid.length }, 'ACLs created');
        await context.authorizer.refresh();
      }
      return { throttleTimeMs: 0, results: answered };
    },
  };
}

export function deleteAclsHandler(context: BrokerContext, store: CoordinationStore): ApiHandler<DeleteAclsRequest, DeleteAclsResponse> {
  return {
    api: DeleteAclsApi,
    async handle(request, _version, requestContext) {
      const refused = refusal(context, requestContext, AclOperation.ALTER);
      if (refused !== undefined) return { throttleTimeMs: 0, filterResults: request.filters.map(() => ({ ...refused, matchingAcls: [] })) };
      const filters = request.filters.map(toFilter);
      const invalid = filters.map(invalidFilterReason);
      // An invalid filter matches nothing (and is answered INVALID_REQUEST); the others are applied.
      const usable = filters.map((filter, index) => (invalid[index] === undefined ? filter : { ...filter, resourceType: -1 }));
      const removed = await removeAcls(store, usable);
      if (removed.some((list) => list.length > 0)) {
        context.logger.info({ principal: requestContext.identity.principal, deleted: removed.reduce((sum, list) => sum + list.length, 0) }, 'ACLs deleted');
        await context.authorizer.refresh();
      }
      return {
        throttleTimeMs: 0,
        filterResults: filters.map((_, index) => {
          const reason = invalid[index];
          if (reason !== undefined) return { errorCode: KafkaErrorCode.INVALID_REQUEST, errorMessage: reason, matchingAcls: [] };
          return {
            errorCode: KafkaErrorCode.NONE,
            errorMessage: null,
            matchingAcls: (removed[index] ?? []).map(({ binding, error }) => ({
              errorCode: error === undefined ? KafkaErrorCode.NONE : KafkaErrorCode.UNKNOWN_SERVER_ERROR,
              errorMessage: error === undefined ? null : `not deleted: ${error.message}`,
              resourceType: binding.resourceType,
              resourceName: binding.resourceName,
              patternType: binding.patternType,
              principal: binding.principal,
              host: binding.host,
              operation: binding.operation,
              permissionType: binding.permission,
            })),
          };
        }),
      };
    },
  };
}
