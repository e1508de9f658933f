/** OHIF Viewer 3.13 configuration for clinigym: a template whose {{PROXY_PATH}} fields serve.py fills.
 *
 * One data source: Orthanc's DICOMweb plugin, reached through serve.py's
 * same-origin proxy at {{PROXY_PATH}} (no CORS, nothing leaves loopback).
 * Every first-visit UI is off by configuration, so a fresh browser profile
 * shows the same screen at every reset: no onboarding tour, no
 * investigational-use banner, no cross-origin/CPU-fallback warnings.
 */
window.config = {
  name: 'clinigym',
  routerBasename: '/',
  extensions: [],
  modes: [],
  // Legacy (array) form: added at Global scope, which wins over the default
  // extension's `ohif.tours` (the viewer's shepherd.js tour).
  customizationService: [
    {
      'ohif.tours': { $set: [] },
    },
  ],
  investigationalUseDialog: { option: 'never' },
  showStudyList: true,
  maxNumberOfWebWorkers: 2,
  showWarningMessageForCrossOrigin: false,
  showCPUFallbackMessage: false,
  showLoadingIndicator: false,
  showErrorDetails: 'always',
  experimentalStudyBrowserSort: false,
  strictZSpacingForVolumeViewport: true,
  groupEnabledModesFirst: true,
  allowMultiSelectExport: false,
  maxNumRequests: { interaction: 100, thumbnail: 10, prefetch: 10 },
  defaultDataSourceName: 'orthanc',
  dataSources: [
    {
      namespace: '@ohif/extension-default.dataSourcesModule.dicomweb',
      sourceName: 'orthanc',
      configuration: {
        friendlyName: 'Orthanc (clinigym)',
        name: 'orthanc',
        wadoUriRoot: '/wado',
        qidoRoot: '{{PROXY_PATH}}',
        wadoRoot: '{{PROXY_PATH}}',
        qidoSupportsIncludeField: true,
        supportsReject: false,
        dicomUploadEnabled: false,
        imageRendering: 'wadors',
        thumbnailRendering: 'wadors',
        enableStudyLazyLoad: true,
        supportsFuzzyMatching: false,
        supportsWildcard: true,
        omitQuotationForMultipartRequest: true,
        bulkDataURI: { enabled: true },
      },
    },
  ],
  httpErrorHandler: error => {
    console.warn('clinigym: HTTP error', error.status);
  },
};
